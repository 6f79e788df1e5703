//! Empty: this package exists so that `cargo metadata --locked` fetches the official Rust SDK crate
//! (see Cargo.toml).
