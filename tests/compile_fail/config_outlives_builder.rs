// A builder config must not outlive the builder that created it.
fn main() {
    let builder = trt::Builder::new().unwrap();
    let config = builder.config().unwrap();
    drop(builder);
    drop(config);
}
