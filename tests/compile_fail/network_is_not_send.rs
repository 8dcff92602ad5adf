// A network is used on its builder's thread only: not Send.
fn needs_send<T: Send>(_: &T) {}
fn main() {
    let builder = trt::Builder::new().unwrap();
    let network = builder.network(true).unwrap();
    needs_send(&network);
}
