"""Raw HTTP for the serving tests: `http.client` sends what `requests`
would refuse to (bad methods, lying Content-Lengths, invalid bytes)."""

import http.client
import json
from urllib.parse import urlsplit


def call(url, method="GET", path="/", body=None, headers=None, timeout=30):
    """(status, parsed JSON or text) of one request on a new connection."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    try:
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode("utf-8")
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        data = response.read()
        kind = response.getheader("Content-Type", "")
        if kind.startswith("application/json"):
            return response.status, json.loads(data)
        return response.status, data.decode("utf-8")
    finally:
        connection.close()
