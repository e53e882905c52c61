"""Serves the API with the standard library's WSGI server."""

from wsgiref.simple_server import make_server

from todo.api import make_app


def main(port: int = 8000) -> None:
    with make_server("127.0.0.1", port, make_app()) as server:
        print(f"serving on http://127.0.0.1:{port}")
        server.serve_forever()


if __name__ == "__main__":
    main()
