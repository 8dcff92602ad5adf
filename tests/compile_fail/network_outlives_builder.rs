// A network must not outlive the builder that created it.
fn main() {
    let network = {
        let builder = trt::Builder::new().unwrap();
        builder.network(true).unwrap()
    };
    drop(network);
}
