"""A fake Gemini Live endpoint for tests and the google-adk reference capture: TLS with a
throwaway self-signed certificate (google-genai dials `wss://` whatever the base URL's scheme,
so the client trusts it through `SSL_CERT_FILE`) and the BidiGenerateContent wire protocol.

`serve_conversation(cert, key)` runs `CONVERSATION` — the turns the `/run_live` comparison
with google-adk uses — on a thread (a context manager yielding the base URL), so the same
provider answers rondo's server in a test and google-adk's api_server in the capture.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

__all__ = ["conversation", "field", "self_signed", "serve_conversation"]


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, written to `folder` (cert.pem, key.pem)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def field(message: dict[str, Any], name: str) -> Any:
    """A field of a client message: protobuf JSON takes lowerCamel and snake_case names (the
    SDK sends `client_content` / `tool_response` at the top, camelCase inside)."""
    snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in name)
    return message.get(name, message.get(snake))


def _content(parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {"serverContent": {"modelTurn": {"parts": parts}}}


def _said(kind: str, text: str) -> dict[str, Any]:
    return {"serverContent": {kind: {"text": text, "finished": True}}}


_DONE = {"serverContent": {"turnComplete": True}}


def conversation(message: dict[str, Any]) -> list[dict[str, Any]] | int:
    """What the model answers to one client message: server messages, or a close code."""
    answered = field(message, "toolResponse")
    if answered is not None:
        (response,) = field(answered, "functionResponses")
        return [_content([{"text": f"It is {response['response']['result']}."}]), _DONE]
    realtime = field(message, "realtimeInput")
    if realtime is not None:
        if field(realtime, "activityEnd") is None and not field(realtime, "audioStreamEnd"):
            return []
        audio = {"inlineData": {"mimeType": "audio/pcm;rate=24000", "data": "AAAA"}}
        return [
            _said("inputTranscription", "hello there"),
            _said("outputTranscription", "Hi!"),
            _content([audio]),
            _DONE,
        ]
    content = field(message, "clientContent")
    if content is None or not field(content, "turnComplete"):
        return []
    text = content["turns"][-1]["parts"][0]["text"]
    if text == "hi":
        return [
            {"sessionResumptionUpdate": {"newHandle": "handle-1", "resumable": True}},
            _said("inputTranscription", "hi"),
            _content([{"text": "Hel"}]),
            _content([{"text": "lo."}]),
            _said("outputTranscription", "Hello."),
            _DONE,
        ]
    if text == "add":
        call = {"id": "call-1", "name": "add", "args": {"a": 2, "b": 3}}
        # Gemini 2.5 Live completes the turn right after the call (google-adk waits for it).
        return [{"toolCall": {"functionCalls": [call]}}, _DONE]
    if text == "boom":
        return 1011
    if text == "bye":
        return 1000
    return [_content([{"text": f"echo {text}"}]), _DONE]


@contextmanager
def serve_conversation(cert: Path, key: Path) -> Iterator[str]:
    """Serve `conversation` on a loopback port (threads); yields the base URL."""
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.server import ServerConnection, serve

    def handler(ws: ServerConnection) -> None:
        with suppress(ConnectionClosed):  # the client may leave without a close frame
            ws.recv()  # the setup message
            ws.send(json.dumps({"setupComplete": {}}))
            for raw in ws:
                answer = conversation(json.loads(raw))
                if isinstance(answer, int):
                    ws.close(answer, "the model ended the session")
                    return
                for body in answer:
                    ws.send(json.dumps(body))

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    with serve(handler, "127.0.0.1", 0, ssl=context) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"https://127.0.0.1:{server.socket.getsockname()[1]}"
        finally:
            server.shutdown()
            thread.join(5)
