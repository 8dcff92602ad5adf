//! Facts about tensor shapes that the network, profile, engine and context
//! layers all ask (kept apart from each, so none of them imports another for it).

/// Does a shape have a dynamic (-1) dimension?
pub(crate) fn is_dynamic(dims: &[i64]) -> bool {
    dims.iter().any(|&d| d < 0)
}
