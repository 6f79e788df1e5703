//! The proxy role (feature `unstable`): a component between a client and an agent in a chain that
//! a conductor runs (`proxy/initialize`, `proxy/successor`).
