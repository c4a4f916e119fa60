//! A test server and keep-alive connections making a known number of requests, for the restart
//! and transaction tests.
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

pub const REQUEST: usize = 64;
pub const RESPONSE: usize = 128;
const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// A server on 127.0.0.1 of the calling thread's namespace: `handle` runs on each accepted
/// connection in a thread of its own (reads time out after 10 s).
pub fn serve(handle: fn(&mut TcpStream)) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(mut s) = s else { return };
            std::thread::spawn(move || {
                s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
                handle(&mut s);
            });
        }
    });
    addr
}

/// A client connection to `addr` whose reads time out after 10 s.
pub fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    s
}

/// Per connection (client port): requests made.
pub type Truth = HashMap<u16, u64>;

/// The load, in the test's namespace: a server answering each REQUEST-byte request with RESPONSE
/// bytes, `conns` keep-alive connections taking turns; `Some(n)`: n requests on each, `None`: close
/// them. Returns the requests made per connection.
pub fn load(conns: usize, steps: mpsc::Receiver<Option<usize>>, step_done: mpsc::Sender<()>, done: Arc<AtomicUsize>) -> Truth {
    let addr = serve(|s| {
        let mut req = [0u8; REQUEST];
        while s.read_exact(&mut req).is_ok() {
            if s.write_all(&[b'r'; RESPONSE]).is_err() {
                return;
            }
        }
    });
    let mut conns: Vec<TcpStream> = (0..conns).map(|_| connect(addr)).collect();
    let mut truth: Truth = conns.iter().map(|s| (s.local_addr().unwrap().port(), 0)).collect();
    while let Ok(Some(n)) = steps.recv() {
        for _ in 0..n {
            for s in &mut conns {
                s.write_all(&[b'q'; REQUEST]).unwrap();
                let mut back = [0u8; RESPONSE];
                s.read_exact(&mut back).unwrap();
                *truth.get_mut(&s.local_addr().unwrap().port()).unwrap() += 1;
                done.fetch_add(1, Ordering::Relaxed);
            }
            // Spread over a second or so, so the kill lands among them.
            std::thread::sleep(Duration::from_millis(5));
        }
        step_done.send(()).unwrap();
    }
    for s in conns.drain(..) {
        s.shutdown(Shutdown::Write).unwrap();
        (&s).read_to_end(&mut Vec::new()).unwrap();
    }
    truth
}
