"""translate-toolkit 3.0.0's tmserver, for bench/tmserver_replay.py; run it with that venv's python.

It builds `translate.services.tmserver.TMServer` exactly as the `tmserver` script does (prefix
/tmserver, 3 candidates, similarity 75, max length 1000) and serves it with the same cheroot
server. Nothing in translate-toolkit is changed. By default one WSGI layer goes in front:

  cheroot hands the app PATH_INFO as PEP 3333 says, the UTF-8 bytes decoded as Latin-1, and
  keeps "%2F" undecoded; tmserver takes that string as the text, so "“x”" arrives as seven
  characters of mojibake and "/usr" as "%2Fusr", and the similarity is computed on the wrong
  text. The layer rebuilds PATH_INFO from REQUEST_URI, percent-decoded as UTF-8, which is what
  amaGama (Flask) sees.

--stock serves the app as the `tmserver` script does, without that layer.

  /tmp/tt3/bin/python bench/tmserver_reference.py --db r.db --po tm.po -s en -t de --port 8888
"""

from __future__ import annotations

import argparse
from urllib.parse import unquote_to_bytes

from translate.misc import wsgi
from translate.services.tmserver import TMServer


def utf8_path(app):
    """PATH_INFO as the client's text: REQUEST_URI's path, percent-decoded as UTF-8."""

    def decoded(environ, start_response):
        uri = environ.get("REQUEST_URI")
        if uri:
            path = uri.encode("latin-1").split(b"?", 1)[0]
            environ["PATH_INFO"] = unquote_to_bytes(path).decode("utf-8", "replace")
        return app(environ, start_response)

    return decoded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--po", required=True)
    parser.add_argument("-s", "--source-lang", required=True)
    parser.add_argument("-t", "--target-lang", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--stock", action="store_true", help="no UTF-8 PATH_INFO layer")
    args = parser.parse_args()
    server = TMServer(
        args.db,
        [args.po],
        max_candidates=3,
        min_similarity=75,
        max_length=1000,
        prefix="/tmserver",
        source_lang=args.source_lang,
        target_lang=args.target_lang,
    )
    app = server.rest if args.stock else utf8_path(server.rest)
    wsgi.launch_server(args.host, args.port, app)


if __name__ == "__main__":
    main()
