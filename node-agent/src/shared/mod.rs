//! Small helpers and types every stage uses: clocks, the endpoint vocabulary of connections, the
//! agent's own CPU, durable files, the thread's capabilities. Depends on nothing else of the crate.
pub mod caps;
pub mod clock;
pub mod durable;
pub mod fnv1a;
pub mod net;
pub mod process;
