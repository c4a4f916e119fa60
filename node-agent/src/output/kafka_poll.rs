//! Waiting for librdkafka's queues without spinning: an eventfd librdkafka writes when a queue
//! gets an event, then the event served without a wait (`poll(Duration::ZERO)`). Hand-written
//! over rdkafka's own waits: its poll loops truncate the rest of each timeout to whole
//! milliseconds and spin through the last one (rdkafka 0.39, `Timeout::as_millis`), about 1 % of
//! a core with 100 ms polls, half the idle agent's CPU in its producer's polling thread.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use rdkafka::bindings as rd;

/// A wait of the producer's thread without an event: bounds the stop and any event missed.
const IDLE_WAIT: Duration = Duration::from_millis(100);
/// Events served per wakeup at most before waiting again (a queue that never empties).
const SERVE_MAX: usize = 100_000;

/// One librdkafka queue and the eventfd it writes when it goes from empty to non-empty.
pub(crate) struct QueueWait {
    queue: *mut rd::rd_kafka_queue_t,
    fd: OwnedFd,
}
// SAFETY: librdkafka queue handles may be used from any thread; the fd is a plain descriptor.
unsafe impl Send for QueueWait {}
unsafe impl Sync for QueueWait {}

impl QueueWait {
    /// Takes `queue` (a new handle from rd_kafka_queue_get_*, destroyed on drop, which must come
    /// before the client's). The final queue of any forwarding, as librdkafka requires.
    pub(crate) fn new(queue: *mut rd::rd_kafka_queue_t) -> Result<QueueWait> {
        if queue.is_null() {
            bail!("librdkafka gave no queue to wait on");
        }
        // SAFETY: eventfd with flags only; the result is checked.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            // SAFETY: the handle came from librdkafka and is not used again.
            unsafe { rd::rd_kafka_queue_destroy(queue) };
            bail!("eventfd for a Kafka queue: {}", std::io::Error::last_os_error());
        }
        let one = 1u64.to_ne_bytes();
        // SAFETY: the queue handle is valid; librdkafka copies the 8-byte payload (an eventfd
        // write must be 8 bytes).
        unsafe { rd::rd_kafka_queue_io_event_enable(queue, fd, one.as_ptr().cast(), one.len()) };
        // SAFETY: fd is a new descriptor owned by nobody else.
        Ok(QueueWait { queue, fd: unsafe { OwnedFd::from_raw_fd(fd) } })
    }

    /// Events waiting in the queue.
    pub(crate) fn len(&self) -> usize {
        // SAFETY: the handle is valid until drop.
        unsafe { rd::rd_kafka_queue_length(self.queue) }
    }

    /// Returns once the queue holds an event, after `timeout`, or at `wake`. An event enqueued
    /// after a `len()` of 0 writes the eventfd, so a wait that follows one returns at once.
    pub(crate) fn wait(&self, timeout: Duration) {
        if self.len() > 0 {
            return;
        }
        let mut pfd = libc::pollfd { fd: self.fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut pfd, 1, timeout.as_millis().min(i32::MAX as u128) as i32) };
        let mut buf = [0u8; 8];
        // SAFETY: reads at most 8 bytes into buf; EAGAIN (nothing written) is fine.
        unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    }

    /// Ends a `wait` now (from another thread).
    pub(crate) fn wake(&self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: an 8-byte write to our eventfd.
        unsafe { libc::write(self.fd.as_raw_fd(), one.as_ptr().cast(), one.len()) };
    }
}

impl Drop for QueueWait {
    fn drop(&mut self) {
        // SAFETY: nobody waits any more (owners drop it after their thread ended); -1 removes the
        // IO trigger before the handle goes.
        unsafe {
            rd::rd_kafka_queue_io_event_enable(self.queue, -1, std::ptr::null(), 0);
            rd::rd_kafka_queue_destroy(self.queue);
        }
    }
}

/// The producer's delivery reports, served by a thread that waits on the main queue.
pub(crate) struct Poller {
    stop: Arc<AtomicBool>,
    wait: Option<Arc<QueueWait>>,
    thread: Option<JoinHandle<()>>,
    /// Waits that ended (an event, a stop, or IDLE_WAIT without either).
    pub(crate) wakeups: Arc<AtomicU64>,
}

impl Poller {
    /// Starts serving the main queue of `rk`; `serve_one` serves at most one event without
    /// waiting (`BaseProducer::poll(Duration::ZERO)`).
    pub(crate) fn start(rk: *mut rd::rd_kafka_t, serve_one: impl Fn() + Send + 'static) -> Result<Poller> {
        // SAFETY: rk is a live client handle; the returned handle is owned by the QueueWait.
        let wait = Arc::new(QueueWait::new(unsafe { rd::rd_kafka_queue_get_main(rk) })?);
        let stop = Arc::new(AtomicBool::new(false));
        let wakeups = Arc::new(AtomicU64::new(0));
        let (st, w, n) = (stop.clone(), wait.clone(), wakeups.clone());
        let thread = std::thread::Builder::new()
            .name("wg-kafka-poll".into())
            .spawn(move || loop {
                for _ in 0..SERVE_MAX {
                    if w.len() == 0 {
                        break;
                    }
                    serve_one();
                }
                if st.load(Ordering::Acquire) {
                    break;
                }
                w.wait(IDLE_WAIT);
                n.fetch_add(1, Ordering::Relaxed);
            })
            .context("start the Kafka delivery report thread")?;
        Ok(Poller { stop, wait: Some(wait), thread: Some(thread), wakeups })
    }

    /// Ends the thread (it serves what is queued first) and releases the queue handle; before the
    /// producer is destroyed.
    pub(crate) fn stop(&mut self) {
        let Some(t) = self.thread.take() else { return };
        self.stop.store(true, Ordering::Release);
        if let Some(w) = &self.wait {
            w.wake();
        }
        let _ = t.join();
        self.wait = None; // the thread's clone went with it: the handle is destroyed here
    }
}

impl Drop for Poller {
    fn drop(&mut self) {
        self.stop();
    }
}
