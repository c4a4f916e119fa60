//! Power budgets: the consumer thread (`consumer`) reads this host's PowerBudget records, the
//! state machine (`budget`) decides what is in force, the actuator (`actuator`) writes the package
//! limits with the originals saved durably first (`state`); `outcome` names its modes and reasons,
//! `metrics` publishes them for `--metrics-addr`.
pub mod actuator;
pub mod budget;
pub mod consumer;
pub mod metrics;
pub mod outcome;
pub mod state;
