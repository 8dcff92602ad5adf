//! trt-nlp
