pub mod power_cap;
pub mod shedding;
