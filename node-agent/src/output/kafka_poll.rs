//! Serves the producer's delivery reports (librdkafka's main queue) from a thread that sleeps on
//! an eventfd librdkafka writes when the queue gets an event, then serves what is queued without
//! waiting. Hand-written instead of rdkafka's `ThreadedProducer`: its poll loop truncates the rest
//! of each timeout to whole milliseconds and spins through the last one (rdkafka 0.39,
//! `Timeout::as_millis`), about 1 % of a core with its 100 ms polls, half the agent's idle CPU.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use anyhow::{bail, Context, Result};
use rdkafka::bindings as rd;

/// How long a wait lasts without an event: bounds the stop and any event the eventfd missed.
const IDLE_WAIT_MS: i32 = 100;
/// Events served per wakeup at most before waiting again (a queue that never empties).
const SERVE_MAX: usize = 100_000;

/// librdkafka's handle of the main queue: thread-safe, used only while the producer lives.
struct Queue(*mut rd::rd_kafka_queue_t);
// SAFETY: librdkafka queue handles may be used from any thread.
unsafe impl Send for Queue {}
unsafe impl Sync for Queue {}

impl Queue {
    fn len(&self) -> usize {
        // SAFETY: the handle is valid until Poller::stop destroys it, after the thread ended.
        unsafe { rd::rd_kafka_queue_length(self.0) }
    }
}

pub(crate) struct Poller {
    stop: Arc<AtomicBool>,
    wake: Arc<OwnedFd>,
    queue: Arc<Queue>,
    thread: Option<JoinHandle<()>>,
    /// Waits that ended (an event, a stop, or IDLE_WAIT_MS without either).
    pub(crate) wakeups: Arc<AtomicU64>,
}

impl Poller {
    /// Starts serving the main queue of `rk`; `serve_one` serves at most one event without
    /// waiting (`BaseProducer::poll(Duration::ZERO)`).
    pub(crate) fn start(rk: *mut rd::rd_kafka_t, serve_one: impl Fn() + Send + 'static) -> Result<Poller> {
        // SAFETY: eventfd with flags only; the result is checked.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            bail!("eventfd for the Kafka delivery reports: {}", std::io::Error::last_os_error());
        }
        // SAFETY: fd is a new descriptor owned by nobody else.
        let wake = Arc::new(unsafe { OwnedFd::from_raw_fd(fd) });
        // SAFETY: rk is a live producer handle; the returned queue handle is destroyed in stop().
        let queue = Arc::new(Queue(unsafe { rd::rd_kafka_queue_get_main(rk) }));
        let one = 1u64.to_ne_bytes();
        // SAFETY: the queue handle is valid; librdkafka copies the 8-byte payload (an eventfd
        // write must be 8 bytes).
        unsafe { rd::rd_kafka_queue_io_event_enable(queue.0, fd, one.as_ptr().cast(), one.len()) };
        let stop = Arc::new(AtomicBool::new(false));
        let wakeups = Arc::new(AtomicU64::new(0));
        let (st, w, q, n) = (stop.clone(), wake.clone(), queue.clone(), wakeups.clone());
        let thread = std::thread::Builder::new()
            .name("wg-kafka-poll".into())
            .spawn(move || loop {
                for _ in 0..SERVE_MAX {
                    if q.len() == 0 {
                        break;
                    }
                    serve_one();
                }
                if st.load(Ordering::Acquire) {
                    break;
                }
                // An event enqueued after the length read above writes the eventfd (the queue went
                // from empty to non-empty), so this returns at once.
                let mut pfd = libc::pollfd { fd: w.as_raw_fd(), events: libc::POLLIN, revents: 0 };
                // SAFETY: one valid pollfd.
                unsafe { libc::poll(&mut pfd, 1, IDLE_WAIT_MS) };
                let mut buf = [0u8; 8];
                // SAFETY: reads at most 8 bytes into buf; EAGAIN (nothing written) is fine.
                unsafe { libc::read(w.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
                n.fetch_add(1, Ordering::Relaxed);
            })
            .context("start the Kafka delivery report thread")?;
        Ok(Poller { stop, wake, queue, thread: Some(thread), wakeups })
    }

    /// Ends the thread (it serves what is queued first) and releases the queue handle; before the
    /// producer is destroyed.
    pub(crate) fn stop(&mut self) {
        let Some(t) = self.thread.take() else { return };
        self.stop.store(true, Ordering::Release);
        let one = 1u64.to_ne_bytes();
        // SAFETY: an 8-byte write to our eventfd wakes the wait.
        unsafe { libc::write(self.wake.as_raw_fd(), one.as_ptr().cast(), one.len()) };
        let _ = t.join();
        // SAFETY: the thread that used the handle has ended; -1 removes the IO trigger.
        unsafe {
            rd::rd_kafka_queue_io_event_enable(self.queue.0, -1, std::ptr::null(), 0);
            rd::rd_kafka_queue_destroy(self.queue.0);
        }
    }
}

impl Drop for Poller {
    fn drop(&mut self) {
        self.stop();
    }
}
