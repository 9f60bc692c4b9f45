"""A small HTTP client for the server tests and the bench (http.client, one connection per call)."""

from __future__ import annotations

import http.client
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body.decode("utf-8"))


class Client:
    def __init__(
        self, host: str, port: int, token: str | None = None, timeout: float = 60.0
    ) -> None:
        self.host, self.port, self.token, self.timeout = host, port, token, timeout

    def with_token(self, token: str | None) -> Client:
        return Client(self.host, self.port, token, self.timeout)

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        raw: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        sent = dict(headers or {})
        if self.token and "Authorization" not in sent and "X-API-Key" not in sent:
            sent["Authorization"] = f"Bearer {self.token}"
        data = raw
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            sent.setdefault("Content-Type", "application/json")
        conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        try:
            conn.request(method, path, body=data, headers=sent)
            response = conn.getresponse()
            return Reply(
                response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
            )
        finally:
            conn.close()

    def get(self, path: str, **kw: Any) -> Reply:
        return self.request("GET", path, **kw)

    def post(self, path: str, body: Any = None, **kw: Any) -> Reply:
        return self.request("POST", path, body, **kw)


def path_quote(text: str) -> str:
    return quote(text, safe="")
