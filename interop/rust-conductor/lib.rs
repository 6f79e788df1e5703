//! Empty: this package exists so that `cargo metadata --locked` fetches the official conductor's
//! crate (see Cargo.toml).
