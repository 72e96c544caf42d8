"""Import resolution of the query-file languages on the layouts real repositories have
(prism_code/parse/resolve_languages.py): whole checkouts and workspaces opened inside a source root."""

from __future__ import annotations

import pytest

from prism_code.parse import Import, parse_source
from prism_code.parse.resolve import ModuleResolver


def resolve(files: list[str], module: str, from_path: str, language: str) -> list[str]:
    return ModuleResolver(files).resolve(Import(module, 1), from_path, language)


@pytest.mark.parametrize(("files", "module", "importer", "language", "expected"), [
    # A checkout: the module's path is a tail of the file's.
    (["lib/sinatra/base.rb", "lib/sinatra/main.rb"], "sinatra/base", "lib/sinatra/main.rb", "ruby",
     ["lib/sinatra/base.rb"]),
    (["lua/telescope/utils.lua", "lua/telescope/init.lua", "lua/telescope/pickers.lua"], "telescope.utils",
     "lua/telescope/pickers.lua", "lua", ["lua/telescope/utils.lua"]),
    (["lua/telescope/builtin/init.lua", "lua/telescope/pickers.lua"], "telescope.builtin",
     "lua/telescope/pickers.lua", "lua", ["lua/telescope/builtin/init.lua"]),
    (["src/Text/Pandoc/Sources.hs", "src/Text/Pandoc/App.hs"], "Text.Pandoc.Sources", "src/Text/Pandoc/App.hs",
     "haskell", ["src/Text/Pandoc/Sources.hs"]),
    (["lib/phoenix/live_view.ex", "lib/phoenix/router.ex"], "Phoenix.LiveView", "lib/phoenix/router.ex", "elixir",
     ["lib/phoenix/live_view.ex"]),
    (["lib/my_app/http_client.ex", "lib/my_app.ex"], "MyApp.HTTPClient", "lib/my_app.ex", "elixir",
     ["lib/my_app/http_client.ex"]),
    # A workspace opened inside the source root: the file's whole path is a tail of the module's.
    (["utils.lua", "pickers.lua"], "telescope.utils", "pickers.lua", "lua", ["utils.lua"]),
    (["Sources.hs", "Readers/Markdown.hs"], "Text.Pandoc.Sources", "Readers/Markdown.hs", "haskell", ["Sources.hs"]),
    (["configuration.rb", "application.rb"], "rails/configuration", "application.rb", "ruby", ["configuration.rb"]),
    (["Support/Str.php", "Routing/Router.php"], "Illuminate\\Support\\Str", "Routing/Router.php", "php",
     ["Support/Str.php"]),
    (["channels/Channel.kt", "flow/Flow.kt"], "kotlinx.coroutines.channels.Channel", "flow/Flow.kt", "kotlin",
     ["channels/Channel.kt"]),
    # A module named by one segment is some other package's unless it sits at a source root.
    (["generators/json.rb", "engine.rb"], "json", "engine.rb", "ruby", []),
    (["lib/json.rb", "lib/app.rb"], "json", "lib/app.rb", "ruby", ["lib/json.rb"]),
    (["Support/Stringable.php", "Support/Str.php"], "Stringable", "Support/Str.php", "php", []),
    (["endpoint/supervisor.ex", "socket.ex"], "Supervisor", "socket.ex", "elixir", []),
    # A tail keeps the module's own name: another plugin's init.lua is not this workspace's.
    (["init.lua", "align.lua"], "nvim-autopairs", "align.lua", "lua", []),
    # `Data.Map` is the containers package's, not the workspace's Map.hs: a tail drops two folders.
    (["Map.hs", "Types.hs"], "Data.Map", "Types.hs", "haskell", []),
    # PSR-4: the vendor namespace is a folder such as src/.
    (["src/Client.php", "src/Exception/RequestException.php", "src/Pool.php"], "GuzzleHttp\\Client", "src/Pool.php",
     "php", ["src/Client.php"]),
    # C#: a namespace is a folder (dots in folder names count as segments); System is the platform's.
    (["Src/Newtonsoft.Json/Linq/JToken.cs", "Src/Newtonsoft.Json/Linq/JObject.cs",
      "Src/Newtonsoft.Json/JsonConvert.cs"], "Newtonsoft.Json.Linq", "Src/Newtonsoft.Json/JsonConvert.cs", "csharp",
     ["Src/Newtonsoft.Json/Linq/JObject.cs", "Src/Newtonsoft.Json/Linq/JToken.cs"]),
    (["Linq/JToken.cs", "Serialization/Reader.cs"], "Newtonsoft.Json.Linq", "Serialization/Reader.cs", "csharp",
     ["Linq/JToken.cs"]),
    (["Collections/Generic/List.cs", "App.cs"], "System.Collections.Generic", "App.cs", "csharp", []),
    (["Shop/Util/Format.cs", "App.cs"], "Shop.Util.Format", "App.cs", "csharp", ["Shop/Util/Format.cs"]),
    # Kotlin and Scala: a class's file, else its package's files (a top-level function, `.*`).
    (["src/a/b/Util.kt", "src/a/b/More.kt", "src/a/c/Main.kt"], "a.b.helper", "src/a/c/Main.kt", "kotlin",
     ["src/a/b/More.kt", "src/a/b/Util.kt"]),
    (["src/cats/data/EitherT.scala", "src/cats/Monad.scala"], "cats.data.EitherT", "src/cats/Monad.scala", "scala",
     ["src/cats/data/EitherT.scala"]),
    (["src/cats/data/EitherT.scala", "src/cats/data/Kleisli.scala", "src/cats/Monad.scala"], "cats.data.*",
     "src/cats/Monad.scala", "scala", ["src/cats/data/EitherT.scala", "src/cats/data/Kleisli.scala"]),
    # Zig: a path beside the file; a package name is no file.
    (["std/os/linux.zig", "std/std.zig"], "../std.zig", "std/os/linux.zig", "zig", ["std/std.zig"]),
    (["std.zig", "main.zig"], "std", "main.zig", "zig", []),
    # Bash: beside the script, else from the workspace root.
    (["bin/run.sh", "bin/lib.sh"], "./lib.sh", "bin/run.sh", "bash", ["bin/lib.sh"]),
    (["install.sh", "lib/utilities.bash", "plugins/x.bash"], "./lib/utilities.bash", "plugins/x.bash", "bash",
     ["lib/utilities.bash"]),
    # Swift imports name modules.
    (["Sources/Alamofire/Session.swift", "Sources/App/App.swift"], "Alamofire", "Sources/App/App.swift", "swift", []),
])
def test_module_paths(files: list[str], module: str, importer: str, language: str, expected: list[str]) -> None:
    assert resolve(files, module, importer, language) == expected


def test_a_ruby_relative_require_and_a_php_require_resolve_beside_the_file() -> None:
    files = ["lib/sinatra/base.rb", "lib/sinatra/middleware/logger.rb", "src/boot.php", "src/app/index.php"]
    assert resolve(files, "./middleware/logger", "lib/sinatra/base.rb", "ruby") == ["lib/sinatra/middleware/logger.rb"]
    assert resolve(files, "./../boot.php", "src/app/index.php", "php") == ["src/boot.php"]


@pytest.mark.parametrize(("line", "expected"), [
    (b'source "${BASH_SOURCE%/*}/lib.sh"', ["./lib.sh"]),
    (b'. "$(dirname "$0")/lib.sh"', ["./lib.sh"]),
    (b"source lib/helpers.bash", ["./lib/helpers.bash"]),
    (b"source <(kubectl completion bash)", []),  # a process substitution is no file
    (b"source ~/.fzf.bash", []),  # nor is the user's home
    (b'source "$HOME/.rvm/scripts/rvm"', []),  # a variable other than the script's folder
])
def test_bash_source_paths(line: bytes, expected: list[str]) -> None:
    parsed = parse_source("run.sh", line + b"\n")
    assert parsed is not None
    assert [imp.module for imp in parsed.imports] == expected
