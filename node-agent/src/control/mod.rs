//! The agent's feedback loops: load shedding (`shedding`: how many connection events the agent
//! can afford, split over domains, run by the capture thread) and power capping (`power_cap`:
//! budgets read from Kafka, applied to RAPL through powercap and restored when they lapse).
pub mod power_cap;
pub mod shedding;
