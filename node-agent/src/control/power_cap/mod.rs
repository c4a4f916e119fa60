pub mod actuator;
pub mod budget;
pub mod consumer;
pub mod metrics;
pub mod state;
