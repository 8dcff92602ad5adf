//! ONNX Runtime: the library, loaded at run time like TensorRT, and sessions (in progress).
