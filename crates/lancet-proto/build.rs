//! Generates the Lance 14 messages from `protos/*.proto` with prost-build.
//!
//! protoc comes from the `protoc-bin-vendored` crate, so no system protoc is needed. Type names
//! are enabled with an empty domain, as Lance does, so `Any` type URLs read
//! `"/lance.table.FragmentReuseIndexDetails"`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Read at run time, not with `env!`: a build-script binary is reused across checkouts that
    // share a target directory, and must look at the protos of the checkout being built.
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR")?;
    let protos_dir = std::path::Path::new(&manifest_dir).join("../../protos");
    let files = [
        "file.proto",
        "fragment_metadata.proto",
        "table.proto",
        "rowids.proto",
        "transaction.proto",
    ];
    for f in &files {
        println!("cargo:rerun-if-changed={}", protos_dir.join(f).display());
    }
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    let include = protoc_bin_vendored::include_path()?;
    let mut config = prost_build::Config::new();
    config
        .protoc_executable(protoc)
        .enable_type_names()
        .type_name_domain(["."], "")
        .btree_map(["."]);
    config.compile_protos(
        &files.map(|f| protos_dir.join(f)),
        &[protos_dir.as_path(), include.as_path()],
    )?;
    Ok(())
}
