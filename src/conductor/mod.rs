//! The conductor (feature `unstable`): runs a chain of proxies in front of an agent and presents
//! it as one agent.
