; Bash: definitions, calls and imports (read by prism_code/parse/tagged.py).

; `f() {...}`, `function f {...}`, `function f() {...}`
(function_definition name: (_) @name body: (_)? @body) @definition.function

(command name: (command_name) @callee)

((command name: (command_name) @_source . argument: (_) @import.module) @import
  (#any-of? @_source "source" ".")
  (#set! import.read "bash_source"))
