// A tensor handle must not outlive its network.
fn main() {
    let builder = trt::Builder::new().unwrap();
    let tensor = {
        let network = builder.network(true).unwrap();
        network.add_input("x", trt::DataType::Float, &[1, 4]).unwrap()
    };
    println!("{:?}", tensor.dims());
}
