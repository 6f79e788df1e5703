//! The test kit (feature `mock`): a mock agent and a mock client, scripted from JSON, for tests of
//! clients and agents.
