//! The connection under every request: listeners' bounds, TLS, who may call, browsers, and
//! the limits checked at the edge before any request is decoded.
//!
//! | module | what it does |
//! |---|---|
//! | `connections` | connection caps, header / idle / body timeouts, gRPC streams and keepalive |
//! | `tls` | TLS (rustls) for HTTP and gRPC, mTLS |
//! | `auth` | API keys (`Authorization: Bearer`) around every HTTP route and gRPC method |
//! | `cors` | CORS for browsers |
//! | `limits` | body, element, text and queue bounds |

pub mod auth;
pub mod connections;
pub mod cors;
pub mod limits;
pub mod tls;
