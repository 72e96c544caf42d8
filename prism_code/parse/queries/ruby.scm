; Ruby: definitions, calls and imports (read by prism_code/parse/tagged.py).

(method name: (_) @name body: (_)? @body) @definition.method

; `def self.build`: a method of the enclosing class (its owner is the class, not `self`).
(singleton_method name: (_) @name body: (_)? @body) @definition.method

(class name: (constant) @name (superclass)? @_super body: (_)? @body) @definition.class
(class name: (scope_resolution scope: (_) @qualifier name: (_) @name) body: (_)? @body) @definition.class
(module name: (constant) @name body: (_)? @body) @definition.module
(module name: (scope_resolution scope: (_) @qualifier name: (_) @name) body: (_)? @body) @definition.module

; `Point = Struct.new(:x, :y) do ... end`, `Error = Class.new(StandardError)`
(assignment
  left: (constant) @name
  right: (call receiver: (constant) @_factory method: (identifier) @_new
    (#any-of? @_factory "Struct" "Class" "Module" "Data")
    (#any-of? @_new "new" "define"))) @definition.class

; Calls with a receiver or arguments; a bare identifier may be a local variable.
(call method: (_)) @callee

((call method: (identifier) @_require arguments: (argument_list . (string (string_content) @import.module)))
  @import
  (#eq? @_require "require"))
((call method: (identifier) @_require arguments: (argument_list . (string (string_content) @import.module)))
  @import
  (#any-of? @_require "require_relative" "load")
  (#set! import.prefix "./"))
