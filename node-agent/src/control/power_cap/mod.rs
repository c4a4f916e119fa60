pub mod actuator;
pub mod budget;
pub mod consumer;
pub mod state;
