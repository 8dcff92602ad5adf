//! CUDA side: devices, streams, events, typed device and pinned buffers, graphs (on cudarc).
