// A parsed ONNX network (and its parser) must not outlive the builder.
fn main() {
    let parsed = {
        let builder = trt::Builder::new().unwrap();
        trt::OnnxParser::parse_file(&builder, "model.onnx").unwrap()
    };
    drop(parsed);
}
