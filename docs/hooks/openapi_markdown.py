"""The REST reference page, rendered from the OpenAPI schema the code generates.

``generate_schema`` runs ``manage.py spectacular --validate --fail-on-warn`` on a host set up
exactly as the README's install section says (``tests.readme_install.settings``), so the page
shows what a project that follows the README serves; a schema warning stops the build.
``render`` turns the schema into Markdown. Neither imports MkDocs: the test suite calls both
(``tests/test_docs_rest.py``) to hold that every path and every error ``code`` is on the page.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = "tests.readme_install.settings"
METHODS = ("get", "post", "put", "patch", "delete")


class SchemaError(RuntimeError):
    """``spectacular --validate --fail-on-warn`` refused the schema."""


def generate_schema(python: str = sys.executable) -> dict[str, Any]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": SETTINGS, "PYTHONPATH": str(ROOT)}
    env.pop("DATABASE_URL", None)
    result = subprocess.run(
        [python, "-m", "django", "spectacular", "--validate", "--fail-on-warn", "--format", "openapi-json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if result.returncode != 0:
        raise SchemaError(f"spectacular failed ({result.returncode}):\n{result.stderr[-4000:]}")
    schema: dict[str, Any] = json.loads(result.stdout)
    return schema


def cell(text: Any) -> str:
    """One table cell: one line, pipes escaped, ``<`` and ``>`` escaped outside code spans."""
    parts = str(text).replace("\n", " ").replace("|", "\\|").split("`")
    for index in range(0, len(parts), 2):
        parts[index] = parts[index].replace("<", "&lt;").replace(">", "&gt;")
    return "`".join(parts).strip()


def anchor(component: str) -> str:
    return "schema-" + re.sub(r"[^a-z0-9]+", "-", component.lower()).strip("-")


def type_of(schema: dict[str, Any]) -> str:
    """A short description of a schema, components linked: ``[TurnstatePause](#schema-...)``."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return f"[`{name}`](#{anchor(name)})"
    for combinator in ("oneOf", "anyOf", "allOf"):
        if combinator in schema:
            return " or ".join(type_of(option) for option in schema[combinator])
    kind = schema.get("type")
    if kind == "array":
        return "array of " + type_of(schema.get("items", {}))
    if kind == "object" and "additionalProperties" in schema and not schema.get("properties"):
        return (
            "object of " + type_of(schema["additionalProperties"])
            if isinstance(schema["additionalProperties"], dict)
            else "object"
        )
    if "enum" in schema:
        return " or ".join(f"`{value}`" for value in schema["enum"] if value is not None)
    text = str(kind) if kind else "any JSON"
    if "format" in schema:
        text += f" ({schema['format']})"
    if schema.get("nullable"):
        text += ", nullable"
    return text


def body_type(content: dict[str, Any]) -> str:
    if not content:
        return "no body"
    media, spec = next(iter(content.items()))
    return f"{type_of(spec.get('schema', {}))} ({media})"


def render_operation(path: str, method: str, operation: dict[str, Any]) -> list[str]:
    out = [f"### `{method.upper()} {path}`", ""]
    summary = operation.get("summary", "")
    out += [f"**{summary}** · operation id `{operation.get('operationId', '')}`", ""]
    if operation.get("description"):
        out += [operation["description"], ""]
    parameters = operation.get("parameters", [])
    if parameters:
        out += ["| parameter | in | type | required | description |", "|---|---|---|---|---|"]
        for parameter in parameters:
            schema = parameter.get("schema", {})
            bounds = [f"{key} {schema[key]}" for key in ("minimum", "maximum", "maxLength") if key in schema]
            kind = type_of(schema) + (f" ({', '.join(bounds)})" if bounds else "")
            required = "yes" if parameter.get("required") else "no"
            out.append(
                f"| `{parameter['name']}` | {parameter['in']} | {cell(kind)} | {required} "
                f"| {cell(parameter.get('description', ''))} |"
            )
        out.append("")
    if "requestBody" in operation:
        out += [f"Request body: {body_type(operation['requestBody'].get('content', {}))}", ""]
    out += ["| status | body | when |", "|---|---|---|"]
    for status, response in sorted(operation.get("responses", {}).items()):
        when = cell(response.get("description", "") or "success")
        out.append(f"| {status} | {cell(body_type(response.get('content', {})))} | {when} |")
    out.append("")
    return out


def render_component(name: str, schema: dict[str, Any]) -> list[str]:
    out = [f"### `{name}` {{#{anchor(name)}}}", ""]
    if schema.get("description"):
        out += [cell(schema["description"]), ""]
    if "enum" in schema:
        out += [
            "| value |",
            "|---|",
            *[f"| `{value}` |" for value in schema["enum"] if value is not None],
            "",
        ]
        return out
    properties = schema.get("properties", {})
    if properties:
        required = set(schema.get("required", []))
        out += ["| field | type | required | description |", "|---|---|---|---|"]
        for field, spec in properties.items():
            flags = " (read-only)" if spec.get("readOnly") else ""
            out.append(
                f"| `{field}` | {cell(type_of(spec))}{flags} | {'yes' if field in required else 'no'} "
                f"| {cell(spec.get('description', ''))} |"
            )
        out.append("")
    elif not schema.get("enum"):
        out += [f"Type: {cell(type_of(schema))}", ""]
    return out


def render(schema: dict[str, Any]) -> str:
    """The endpoints (each method of each path) and then every component, error codes included."""
    out = [
        "## Endpoints",
        "",
        f"Generated at build time from the app's OpenAPI {schema.get('openapi', '3')} schema "
        "(`manage.py spectacular --validate --fail-on-warn`, on a project installed as the README "
        "says, with the app under `api/turnstate/`).",
        "",
    ]
    for path, item in schema.get("paths", {}).items():
        for method in METHODS:
            if method in item:
                out += render_operation(path, method, item[method])
    out += ["## Schemas", ""]
    for name, component in schema.get("components", {}).get("schemas", {}).items():
        out += render_component(name, component)
    return "\n".join(out) + "\n"
