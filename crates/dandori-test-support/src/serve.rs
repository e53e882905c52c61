//! The one way the fake servers run: an axum router on `127.0.0.1:0`, on its own
//! thread with its own tokio runtime, until the returned sender fires.

use std::net::SocketAddr;

use axum::Router;

pub(crate) struct Served {
    pub addr: SocketAddr,
    pub shutdown: tokio::sync::oneshot::Sender<()>,
    pub thread: std::thread::JoinHandle<()>,
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
        shutdown: shutdown_tx,
        thread,
    }
}
