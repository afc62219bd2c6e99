"""The report's Content-Security-Policy: a ``<meta http-equiv>`` that lets only the report's own inline
scripts run (a ``sha256`` hash of each, computed over the written file, W3C CSP Level 3 section 2.3.1) and the
DataTables bundle they import from a ``blob:`` URL, so no inline event handler, ``javascript:`` URL or injected
``<script>`` runs even if some text were ever parsed as HTML."""

from __future__ import annotations

import base64
import hashlib
import re

#: Where the template puts the policy; :func:`with_policy` replaces its first occurrence (in ``<head>``).
PLACEHOLDER = "thai-eval-csp-placeholder-4f1c"
#: Every ``<script>`` element with its attributes and text (the text cannot contain ``</script``).
SCRIPT = re.compile(r"<script\b([^>]*)>(.*?)</script\s*>", re.I | re.S)
TYPE_ATTRIBUTE = re.compile(r"""\btype\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.I)
#: ``type`` values of scripts the browser runs (HTML Living Standard, "prepare the script element"); any other
#: type (``application/json``, ``text/plain``) is a data block, never run, so it needs no hash.
RUN_TYPES = frozenset(
    {
        "",
        "module",
        "text/javascript",
        "application/javascript",
        "text/ecmascript",
        "application/ecmascript",
        "text/jscript",
        "text/livescript",
        "application/x-javascript",
    }
)
#: Where the report's script imports the embedded DataTables bundle from (``import()`` of a ``blob:`` URL; Chromium
#: checks that against ``script-src`` even under ``'strict-dynamic'``). Only running script can make a ``blob:``
#: URL, and the report's revokes it once imported, so this lets no injected markup run anything.
MODULE_SOURCE = "blob:"
#: Everything but scripts: no fetches at all (``default-src 'none'``), the report's images and fonts as ``data:``
#: URLs (the DataTables CSS), styles inline (the page's two ``<style>`` blocks, the figures' SVG ``style``
#: attributes and those DataTables sets; a style runs no code, and with nothing fetchable it sends nothing), no
#: ``<base>`` and no form submissions.
OTHER_DIRECTIVES = (
    "default-src 'none'",
    "style-src 'unsafe-inline'",
    "img-src data:",
    "font-src data:",
    "base-uri 'none'",
    "form-action 'none'",
)


def executable_scripts(html: str) -> list[str]:
    """The text of every inline script of ``html`` that the browser would run, in document order."""
    out = []
    for m in SCRIPT.finditer(html):
        t = TYPE_ATTRIBUTE.search(m.group(1))
        kind = "" if t is None else next(g for g in t.groups() if g is not None)
        if kind.strip().lower() in RUN_TYPES:
            out.append(m.group(2))
    return out


def script_hash(text: str) -> str:
    """The CSP hash source of an inline script's text: ``'sha256-<base64>'`` of its UTF-8 bytes (the browser
    hashes the text as parsed, with CR LF and lone CR normalised to LF)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def policy(html: str) -> str:
    """The policy for ``html``: its inline scripts by hash (and what they load), nothing else.

    Raises:
        ValueError: ``html`` has no inline script (the report would not work).
    """
    scripts = executable_scripts(html)
    if not scripts:
        raise ValueError("the report has no inline script to allow")
    hashes = " ".join(dict.fromkeys(script_hash(s) for s in scripts))
    return "; ".join((f"script-src {hashes} {MODULE_SOURCE}", *OTHER_DIRECTIVES))


def with_policy(html: str) -> str:
    """``html`` (final: no byte of a script changes after this) with :data:`PLACEHOLDER` replaced by its policy.

    Raises:
        ValueError: ``html`` holds no placeholder.
    """
    if PLACEHOLDER not in html:
        raise ValueError("the report template has no Content-Security-Policy placeholder")
    return html.replace(PLACEHOLDER, policy(html), 1)
