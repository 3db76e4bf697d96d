"""Jolokia 1.x (the agent ActiveMQ 5.17 ships at ``/api/jolokia/``): ``read``, ``exec``, ``search``, ``list`` and
``version`` over GET (the request in the path) and POST (a JSON object, or a list of them: a bulk request), answered
with Jolokia's JSON shapes.

Theory of operation
-------------------
Every request gets a response object: ``{"request": {...}, "value": ..., "timestamp": SECONDS, "status": 200}``, or
on failure ``{"request": {...}, "error_type": JAVA_CLASS, "error": "JAVA_CLASS : message", "status": N}``
(ActiveMQ's agent runs with ``allowErrorDetails=false``: no stack trace). The HTTP status is 200 either way, as
Jolokia's servlet answers, and the content type ``text/plain`` (Jolokia 1.x's default). Statuses as Jolokia maps
JMX's exceptions: 404 for ``InstanceNotFoundException`` and ``AttributeNotFoundException``, 400 for a bad request
(``IllegalArgumentException``), 403 for a refusal, 500 for an operation that failed.

In a GET path, parts are separated by ``/``; ``!/`` is a slash inside a part and ``!!`` an exclamation mark
(Jolokia's escapes). An exec argument ``[null]`` is null and ``""`` the empty string. Object names in answers are
canonical (keys sorted), as Jolokia's ``canonicalNaming`` default says; ``canonicalNaming=false`` keeps the order
given.

A bulk request (a POSTed list) holds at most :data:`MAX_BULK` requests and :data:`MAX_POST_SIZE` bytes (a longer one
is one 400 ``IllegalArgumentException`` answer, refused before it is parsed when too large; Jolokia has no such
limit, a fidelity row), and runs in turns: after each
:data:`BULK_TURN` requests the event loop runs other clients' work, as the other edges' frames take turns (issue 41:
300,000 reads in one POST stopped every client for 13 s).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping
from typing import Any

from minibroker.errors import AccessDenied, MinibrokerError

from .mbeans import MBeanError, MBeans, ObjectName, bad_argument

__all__ = ["AGENT_VERSION", "BULK_TURN", "MAX_BULK", "MAX_POST_SIZE", "PROTOCOL_VERSION", "Jolokia", "split_path"]

#: the Jolokia agent ActiveMQ 5.17.2 ships, and its protocol version
AGENT_VERSION = "1.7.1"
PROTOCOL_VERSION = "7.2"

JSONValue = Any
#: requests in one bulk POST at most, and requests run before the loop gets a turn
MAX_BULK = 1000
BULK_TURN = 50
#: bytes of a POSTed request or bulk request at most (1,000 requests take about 200 KB)
MAX_POST_SIZE = 1024 * 1024


def split_path(path: str) -> list[str]:
    """A GET path's parts: split on ``/``, with ``!/`` a slash and ``!!`` an exclamation mark inside a part."""
    parts: list[str] = []
    current: list[str] = []
    i = 0
    while i < len(path):
        c = path[i]
        if c == "!" and i + 1 < len(path):
            current.append(path[i + 1])
            i += 2
            continue
        if c == "/":
            parts.append("".join(current))
            current = []
        else:
            current.append(c)
        i += 1
    parts.append("".join(current))
    while parts and parts[0] == "":
        parts.pop(0)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


class _Failure(Exception):
    def __init__(self, java_type: str, message: str, status: int) -> None:
        super().__init__(message)
        self.java_type, self.message, self.status = java_type, message, status


def _attribute_missing(message: str) -> _Failure:
    return _Failure("javax.management.AttributeNotFoundException", message, 404)


class Jolokia:
    """One HTTP request's Jolokia requests, read and run against ``mbeans`` (its connection's view)."""

    def __init__(self, mbeans: MBeans, params: Mapping[str, str]) -> None:
        self.mbeans = mbeans
        self.canonical = params.get("canonicalNaming", "true").lower() != "false"

    # -- the two HTTP forms ---------------------------------------------------------------------------------------

    def get(self, path: str) -> JSONValue:
        parts = split_path(path)
        if not parts:
            return self.run({"type": "version"})
        kind, rest = parts[0].lower(), parts[1:]
        request: dict[str, JSONValue] = {"type": kind}
        if kind in ("read", "exec", "search", "write") and not rest:
            return self._error(None, bad_argument(f"No MBean name given for {kind} request"))
        if kind == "read":
            request["mbean"] = rest[0]
            if len(rest) > 1 and rest[1]:
                names = rest[1].split(",")
                request["attribute"] = names if len(names) > 1 else names[0]
            if len(rest) > 2:
                request["path"] = "/".join(rest[2:])
        elif kind == "exec":
            request["mbean"] = rest[0]
            if len(rest) > 1:
                request["operation"] = rest[1]
            request["arguments"] = [_get_argument(a) for a in rest[2:]]
        elif kind == "search":
            request["mbean"] = rest[0]
        elif kind == "list":
            if rest:
                request["path"] = "/".join(p.replace("/", "!/") for p in rest)
        elif kind == "write":
            request["mbean"] = rest[0]
        return self.run(request)

    async def post_in_turns(self, body: bytes) -> JSONValue:
        """A POSTed request or bulk request (see the module notes: at most :data:`MAX_BULK`, in turns)."""
        if len(body) > MAX_POST_SIZE:  # refused before it is parsed: 300,000 requests took 500 MiB as objects
            return self._error(
                None, bad_argument(f"a request body of {len(body)} bytes: at most {MAX_POST_SIZE} are taken")
            )
        try:
            document = json.loads(body.decode("utf-8") or "null")
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            return self._error(None, bad_argument(f"Invalid JSON request: {exc}"))
        if isinstance(document, list):
            if len(document) > MAX_BULK:
                return self._error(
                    None, bad_argument(f"a bulk request of {len(document)} requests: at most {MAX_BULK} are taken")
                )
            answers: list[JSONValue] = []
            for i, r in enumerate(document):
                if i and i % BULK_TURN == 0:
                    await asyncio.sleep(0)  # other clients' turn
                answers.append(self.run(r) if isinstance(r, dict) else self._error(None, bad_argument(f"{r!r}")))
            return answers
        if isinstance(document, dict):
            return self.run(document)
        return self._error(None, bad_argument(f"Invalid JSON Request {document!r}"))

    # -- one request ------------------------------------------------------------------------------------------------

    def run(self, request: dict[str, JSONValue]) -> JSONValue:
        kind = request.get("type")
        handlers: dict[str, Callable[[dict[str, JSONValue], dict[str, JSONValue]], JSONValue]] = {
            "read": self._read,
            "exec": self._exec,
            "search": self._search,
            "list": self._list,
            "version": self._version,
        }
        if not isinstance(kind, str) or kind.lower() not in handlers:
            if kind == "write":
                return self._error(
                    {"type": "write", "mbean": request.get("mbean")},
                    MBeanError(
                        "minibroker's MBean attributes are read-only",
                        java_type="java.lang.UnsupportedOperationException",
                        status=500,
                    ),
                )
            return self._error(None, bad_argument(f"Invalid request type '{kind}'"))
        echo: dict[str, JSONValue] = {"type": kind.lower()}
        try:
            value = handlers[kind.lower()](request, echo)
        except _Failure as failure:
            return _shape_error(echo, failure.java_type, failure.message, failure.status)
        except (MBeanError, AccessDenied, MinibrokerError) as exc:
            return self._error(echo, exc)
        return {"request": echo, "value": value, "timestamp": int(time.time()), "status": 200}

    def refused(self, why: str) -> JSONValue:
        """Jolokia's answer to a request its access policy refuses (a SecurityException: 403)."""
        return _shape_error(None, "java.lang.Exception", why, 403)

    def _error(self, echo: dict[str, JSONValue] | None, exc: Exception) -> JSONValue:
        if isinstance(exc, MBeanError):
            return _shape_error(echo, exc.java_type or "java.lang.Exception", exc.message, exc.status or 500)
        if isinstance(exc, AccessDenied):
            # Jolokia answers a SecurityException with 403 and a plain Exception (its stack trace wiped)
            return _shape_error(echo, "java.lang.Exception", str(exc), 403)
        return _shape_error(echo, "java.lang.Exception", str(exc), 500)

    def _name(self, request: Mapping[str, JSONValue], echo: dict[str, JSONValue]) -> ObjectName:
        text = request.get("mbean")
        if not isinstance(text, str):
            raise bad_argument(f"No MBean name given for {echo['type']} request")
        name = ObjectName.parse(text)
        echo["mbean"] = name.canonical if self.canonical or name.is_pattern else str(name)
        return name

    def _shown(self, name: ObjectName) -> str:
        return name.canonical if self.canonical else str(name)

    def _read(self, request: dict[str, JSONValue], echo: dict[str, JSONValue]) -> JSONValue:
        name = self._name(request, echo)
        attribute = request.get("attribute")
        if attribute is not None:
            echo["attribute"] = attribute
        path = request.get("path")
        if isinstance(path, str) and path:
            echo["path"] = path
        names: list[str] | None
        if attribute is None or attribute == []:
            names = None
        elif isinstance(attribute, str):
            names = [attribute]
        elif isinstance(attribute, list) and all(isinstance(a, str) for a in attribute):
            names = list(attribute)
        else:
            raise bad_argument(f"attribute must be a string or a list of strings, not {attribute!r}")
        if name.is_pattern:
            found = self.mbeans.search(name)
            if not found:
                raise MBeanError(
                    f"No MBean with pattern {name.canonical} found for reading attributes",
                    java_type="javax.management.InstanceNotFoundException",
                    status=404,
                )
            result: dict[str, JSONValue] = {}
            for each in found:
                kind, target = self.mbeans.resolve(each)
                readers = self.mbeans.attributes(kind, target)
                wanted = list(readers) if names is None else [n for n in names if n in readers]
                if wanted:
                    result[self._shown(each)] = {n: readers[n]() for n in wanted}
            if not result:
                raise bad_argument(f"No matching attributes {names} found on MBeans {[n.canonical for n in found]}")
            return result
        kind, target = self.mbeans.resolve(name)
        readers = self.mbeans.attributes(kind, target)
        if names is None:
            value: JSONValue = {n: read() for n, read in readers.items()}
        elif len(names) == 1 and not isinstance(attribute, list):
            if names[0] not in readers:
                raise _attribute_missing(f"No such attribute: {names[0]}")
            value = readers[names[0]]()
        else:
            missing = [n for n in names if n not in readers]
            if missing:
                raise _attribute_missing(f"No such attribute: {missing[0]}")
            value = {n: readers[n]() for n in names}
        if isinstance(path, str) and path:
            value = _walk(value, path)
        return value

    def _exec(self, request: dict[str, JSONValue], echo: dict[str, JSONValue]) -> JSONValue:
        name = self._name(request, echo)
        operation = request.get("operation")
        arguments = request.get("arguments") or []
        if not isinstance(arguments, list):
            arguments = [arguments]
        if arguments:
            echo["arguments"] = arguments
        if not isinstance(operation, str) or not operation:
            raise bad_argument(f"No operation given for exec Request on MBean {name}")
        echo["operation"] = operation
        kind, target = self.mbeans.resolve(name)
        operations = self.mbeans.info(kind).operations
        op_name, _, signature = operation.partition("(")
        if op_name not in operations:
            raise bad_argument(f"No operation {op_name} found on MBean {self._shown(name)}")
        params, _, _ = operations[op_name]
        if signature:
            types = [t.strip() for t in signature.rstrip(")").split(",") if t.strip()]
            if types != [t for _, t in params]:
                known = "(" + ",".join(t for _, t in params) + ")"
                raise bad_argument(
                    f"No operation {operation} on MBean {self._shown(name)} exists. Known signatures: [{known}]"
                )
        if len(arguments) != len(params):
            raise bad_argument(
                f"Invalid number of operation arguments. Operation {op_name} on {self._shown(name)} requires "
                f"{len(params)} parameters, not {len(arguments)} as given"
            )
        return self.mbeans.invoke(kind, target, op_name, arguments)

    def _search(self, request: dict[str, JSONValue], echo: dict[str, JSONValue]) -> JSONValue:
        pattern = self._name(request, echo)
        return sorted(self._shown(n) for n in self.mbeans.search(pattern))

    def _list(self, request: dict[str, JSONValue], echo: dict[str, JSONValue]) -> JSONValue:
        tree: dict[str, JSONValue] = {}
        for each in self.mbeans.names():
            kind, _ = self.mbeans.resolve(each)
            info = self.mbeans.info(kind)
            keys = each.canonical.split(":", 1)[1]
            entry: dict[str, JSONValue] = {
                "desc": info.description,
                "attr": {a: {"type": t, "desc": a, "rw": False} for a, t in info.attributes.items()},
            }
            if info.operations:
                entry["op"] = {
                    op: {"args": [{"name": n, "type": t, "desc": n} for n, t in params], "ret": ret, "desc": desc}
                    for op, (params, ret, desc) in info.operations.items()
                }
            tree.setdefault(each.domain, {})[keys] = entry
        path = request.get("path")
        value: JSONValue = tree
        if isinstance(path, str) and path:
            echo["path"] = path
            for part in split_path(path):
                if not isinstance(value, dict) or part not in value:
                    raise _attribute_missing(f"No entry '{part}' found on the list path {path}")
                value = value[part]
        return value

    def _version(self, request: dict[str, JSONValue], echo: dict[str, JSONValue]) -> JSONValue:
        return {
            "agent": AGENT_VERSION,
            "protocol": PROTOCOL_VERSION,
            "info": {"product": "minibroker", "vendor": "minibroker", "version": _version()},
            "config": {
                "agentType": "servlet",
                "agentDescription": "Apache ActiveMQ",
                "canonicalNaming": "true",
                "allowErrorDetails": "false",
            },
        }


def _version() -> str:
    import minibroker

    return str(minibroker.__version__)


def _get_argument(text: str) -> JSONValue:
    if text == "[null]":
        return None
    if text == '""':
        return ""
    return text


def _walk(value: JSONValue, path: str) -> JSONValue:
    for part in split_path(path):
        if isinstance(value, dict):
            if part not in value:
                raise _attribute_missing(f"Map key '{part}' is unknown for map with keys {sorted(value)}")
            value = value[part]
        elif isinstance(value, list):
            if not part.isdigit():
                raise _attribute_missing(f"Index '{part}' is not numeric for accessing list")
            if int(part) >= len(value):
                raise _attribute_missing(f"Index '{part}' is out-of-bound for a list of size {len(value)}")
            value = value[int(part)]
        else:
            raise _attribute_missing(f"Illegal path element {part} for object {value}")
    return value


def _shape_error(echo: dict[str, JSONValue] | None, java_type: str, message: str, status: int) -> JSONValue:
    shaped: dict[str, JSONValue] = {"error_type": java_type, "error": f"{java_type} : {message}", "status": status}
    if echo is not None:
        shaped = {"request": echo, **shaped}
    return shaped
