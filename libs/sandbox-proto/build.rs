//! Generates the protocol's Rust code with protox (pure Rust: no `protoc` on the machine).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/sandbox.proto");
    let descriptors = protox::compile(["sandbox.proto"], ["proto"])?;
    tonic_prost_build::configure().build_client(true).build_server(true).compile_fds(descriptors)?;
    Ok(())
}
