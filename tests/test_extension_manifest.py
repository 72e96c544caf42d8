"""The VS Code extension's settings match the server's: same keys, same defaults.

The extension sends every `prism.*` setting with its effective value, so a default in
package.json that differs from prism_code/lsp/settings.py would silently override the server's,
and a key the server does not know would be warned about on every start.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from prism_code.lsp.settings import FIND_STRATEGIES, KEYS, Settings, parse_settings
from prism_code.parse import LANGUAGES
from prism_code.tasks.model_policy import CHOICES

REPO = Path(__file__).resolve().parents[1]
MANIFEST = json.loads((REPO / "package.json").read_text())
PROPERTIES = MANIFEST["contributes"]["configuration"]["properties"]
CLIENT_ONLY = {"interpreter"}  # chooses the Python that runs the server


def _editor_default(value):
    # The settings UI has no null: an empty string or list stands for "none".
    return "" if value is None else value


def test_manifest_declares_exactly_the_server_settings():
    declared = {name.removeprefix("prism.") for name in PROPERTIES}
    assert declared - CLIENT_ONLY == set(KEYS.values())


def test_manifest_defaults_are_the_server_defaults():
    server = Settings().to_json()
    for key, default in server.items():
        assert PROPERTIES[f"prism.{key}"]["default"] == _editor_default(default), key


def test_manifest_lists_every_find_strategy_and_the_server_ones():
    strategy = PROPERTIES["prism.find.strategy"]
    # The four strategies of find-by-description (issue 4), each with its description.
    assert strategy["enum"] == ["retrieval", "prism", "wim", "long-context"]
    assert len(strategy["enumDescriptions"]) == len(strategy["enum"])
    assert set(FIND_STRATEGIES) <= set(strategy["enum"])


def test_manifest_offers_exactly_the_completion_models_the_server_accepts():
    model = PROPERTIES["prism.completion.model"]
    assert model["enum"] == ["auto", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"] == list(CHOICES)
    assert len(model["markdownEnumDescriptions"]) == len(model["enum"])
    for value in model["enum"]:
        settings = parse_settings({"completion": {"model": value}})
        assert settings.completion_model == value and not settings.warnings


def test_extension_sends_the_server_keys():
    source = (REPO / "extension" / "src" / "settings.ts").read_text()
    block = re.search(r"SERVER_KEYS = \[(.*?)\] as const", source, re.S)
    assert block is not None
    assert re.findall(r"'([^']+)'", block.group(1)) == list(KEYS.values())


def _extension_sources() -> str:
    return "\n".join(p.read_text() for p in sorted((REPO / "extension" / "src").glob("*.ts")))


def test_every_extension_command_is_in_the_palette():
    # A command registered but not contributed is missing from the palette; one contributed
    # but not registered fails when the user picks it.
    registered = set(re.findall(r"_COMMAND = '(prism-code\.\w+)'", _extension_sources()))
    contributed = {c["command"] for c in MANIFEST["contributes"]["commands"]}
    assert "prism-code.showCompletionContext" in registered
    assert registered == contributed


def test_extension_asks_the_server_by_its_command_ids():
    from prism_code.lsp import commands

    server = {value for name, value in vars(commands).items()
              if name.isupper() and isinstance(value, str) and value.startswith("prism.")}
    source = (REPO / "extension" / "src" / "protocol.ts").read_text()
    assert set(re.findall(r"= '(prism\.\w+)';", source)) == server


# prism_code's language names -> VS Code's language identifiers, where they differ.
_VSCODE_LANGUAGE_IDS = {"tsx": ["typescriptreact"], "javascript": ["javascript", "javascriptreact"],
                        "bash": ["shellscript"]}


def test_the_extension_sends_the_server_every_language_it_parses():
    source = (REPO / "extension" / "src" / "server.ts").read_text()
    listed = re.search(r"const LANGUAGES = \[([^\]]*)\]", source)
    assert listed is not None
    sent = set(re.findall(r"'([\w-]+)'", listed.group(1)))
    wanted = {vscode_id for language in LANGUAGES for vscode_id in _VSCODE_LANGUAGE_IDS.get(language, [language])}
    assert sent == wanted
