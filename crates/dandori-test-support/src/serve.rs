//! One axum app on `127.0.0.1:0`, on its own thread with its own tokio runtime, so
//! servers work from plain `#[test]` functions.

use std::net::SocketAddr;

use axum::Router;

pub(crate) struct Served {
    pub addr: SocketAddr,
    pub shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    pub thread: Option<std::thread::JoinHandle<()>>,
}

/// Serves `app`; `what` names the server in setup panics.
pub(crate) fn serve(app: Router, what: &'static str) -> Served {
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (shutdown_tx, shutdown_rx) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let runtime = match tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
        {
            Ok(rt) => rt,
            Err(err) => panic!("{what} runtime: {err}"),
        };
        runtime.block_on(async move {
            let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
                Ok(l) => l,
                Err(err) => panic!("binding the {what}: {err}"),
            };
            let _ = addr_tx.send(listener.local_addr());
            // Frames (SSE) go out one by one: don't let Nagle hold them back.
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
        Ok(Err(err)) => panic!("{what} address: {err}"),
        Err(err) => panic!("{what} did not start: {err}"),
    };
    Served {
        addr,
        shutdown: Some(shutdown_tx),
        thread: Some(thread),
    }
}
