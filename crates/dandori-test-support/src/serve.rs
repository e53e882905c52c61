//! The one way the fake servers run: an axum router on `127.0.0.1:0`, on its own
//! thread with its own tokio runtime, until the returned sender fires.

use std::net::SocketAddr;

use axum::Router;

/// A running fake server: stopped (graceful shutdown signalled) when dropped.
pub(crate) struct Served {
    pub addr: SocketAddr,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    join_on_drop: bool,
}

impl Served {
    /// Drop also waits for the server thread to end (for servers whose requests
    /// always finish; the fake LLM's abandoned streams would keep it waiting).
    pub(crate) fn joined_on_drop(mut self) -> Served {
        self.join_on_drop = true;
        self
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take()
            && self.join_on_drop
        {
            let _ = t.join();
        }
    }
}

pub(crate) fn spawn(app: Router, name: &'static str) -> Served {
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (shutdown_tx, shutdown_rx) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let runtime = match tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
        {
            Ok(rt) => rt,
            Err(err) => panic!("{name} runtime: {err}"),
        };
        runtime.block_on(async move {
            let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
                Ok(l) => l,
                Err(err) => panic!("binding the {name}: {err}"),
            };
            let _ = addr_tx.send(listener.local_addr());
            // SSE frames go out one by one: don't let Nagle hold them back.
            use axum::serve::ListenerExt;
            let listener = listener.tap_io(|tcp| {
                let _ = tcp.set_nodelay(true);
            });
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = shutdown_rx.await;
                })
                .await;
        });
    });
    let addr = match addr_rx.recv() {
        Ok(Ok(addr)) => addr,
        Ok(Err(err)) => panic!("{name} address: {err}"),
        Err(err) => panic!("{name} did not start: {err}"),
    };
    Served {
        addr,
        shutdown: Some(shutdown_tx),
        thread: Some(thread),
        join_on_drop: false,
    }
}
