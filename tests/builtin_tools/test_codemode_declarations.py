"""Pi's TypeScript rendering of JSON Schemas for codemode scripts."""

from __future__ import annotations

from pi_builtin_tools.codemode.declarations import schema_to_type


def test_schema_types() -> None:
    assert schema_to_type({"type": "string"}) == "string"
    assert schema_to_type({"type": ["integer", "null"]}) == "number | null"
    assert schema_to_type({"enum": ["a", 1]}) == '"a" | 1'
    assert schema_to_type({"const": True}) == "true"
    assert schema_to_type({"anyOf": [{"type": "string"}, {}]}) == "unknown"
    assert schema_to_type({"type": "array", "items": {"type": "number"}}) == "Array<number>"
    assert schema_to_type({"prefixItems": [{"type": "string"}, {"type": "boolean"}]}) == (
        "[string, boolean]"
    )
    assert schema_to_type({"type": "object"}) == "{ [key: string]: unknown; }"
    assert schema_to_type({"type": "object", "properties": {}, "additionalProperties": False}) == (
        "{}"
    )
    assert (
        schema_to_type(
            {
                "type": "object",
                "properties": {"b-c": {"type": "string"}, "a": {}},
                "required": ["a"],
            }
        )
        == '{ a: unknown; "b-c"?: string; }'
    )


def test_descriptions_and_constraint_tags_become_comments() -> None:
    schema = {
        "type": "object",
        "properties": {
            "n": {
                "type": "integer",
                "description": "How many.\nAt most ten.",
                "minimum": 1,
                "maximum": 10.0,
                "default": 3,
            },
            "s": {"anyOf": [{"type": "string", "pattern": "^x"}, {"type": "null"}]},
        },
        "required": ["n"],
    }
    assert schema_to_type(schema) == (
        "{\n  // How many.\n  // At most ten.\n  // @integer @minimum 1 @maximum 10 @default 3\n"
        "  n: number;\n  // @pattern ^x\n  s?: string | null;\n}"
    )
    assert schema_to_type(schema, max_chars=70) == (
        "{\n  // How many.\n  // At most ten.\n  n: number;\n  s?: string | null;\n}"
    )
    assert schema_to_type(schema, max_chars=10) == "unknown"


def test_refs_resolve_and_cycles_stop() -> None:
    schema = {
        "type": "object",
        "properties": {"next": {"$ref": "#"}, "v": {"$ref": "#/$defs/v"}},
        "$defs": {"v": {"type": "number"}},
        "required": ["v"],
    }
    assert schema_to_type(schema) == ("{ next?: { next?: unknown; v: number; }; v: number; }")


def test_the_loadout_lists_script_only_tools_and_tells_what_calls_resolve_to() -> None:
    from pi_builtin_tools.codemode.javascript import (
        CODEMODE_DESCRIPTION,
        create_codemode_tool_definition,
        prepare_codemode_loadout,
    )
    from pi_builtin_tools.files.local import LocalFileOperations
    from pi_builtin_tools.files.read import create_read_tool_definition
    from pi_builtin_tools.search.ls import create_ls_tool_definition
    from pi_core import ToolLoadout, ToolNamespace

    files = LocalFileOperations()
    read = create_read_tool_definition("/tmp", files)
    ls = create_ls_tool_definition("/tmp", files)
    codemode = create_codemode_tool_definition()
    exposure = {"read": "direct", "ls": "codemode", "codemode": "model-only"}
    loadout = ToolLoadout(
        declared=[read, codemode],  # type: ignore[list-item]
        callable=[read, ls],  # type: ignore[list-item]
        registered=[read, ls, codemode],  # type: ignore[list-item]
        get_exposure=exposure.__getitem__,  # type: ignore[arg-type]
        get_namespace=lambda name: (
            ToolNamespace("files", description="File tools.") if name == "ls" else None
        ),
        get_prompt_guidelines=lambda name: ["Prefer small listings."] if name == "ls" else [],
    )
    changes = prepare_codemode_loadout(loadout)
    assert set(changes.descriptions) == {"read", "codemode"}
    assert changes.descriptions["read"] == (
        read.description.strip() + "\n\nCodemode: `tools.read(args)` resolves to "
        '`string | { data: string; mimeType: string; note: string; type: "image"; }`.'
    )
    assert changes.descriptions["codemode"] == (
        CODEMODE_DESCRIPTION
        + "\n\nNested tools:\n\n## files\nFile tools.\n\n### `ls`\n"
        + ls.description.strip()
        + "\n\n- Prefer small listings.\n\ncodemode tool declaration:\n```ts\n"
        "declare const tools: { ls(args: {\n"
        "  // Maximum number of entries to return (default: 500)\n  limit?: number;\n"
        "  // Directory to list (default: current directory)\n  path?: string;\n"
        "}): Promise<string>; };\n```"
    )
