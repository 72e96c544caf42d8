; Kotlin: definitions, calls and imports (read by prism_code/parse/tagged.py).

(class_declaration name: (_) @name [(class_body) (enum_class_body)]? @body) @definition.class
(object_declaration name: (_) @name (class_body)? @body) @definition.object
(companion_object name: (_) @name (class_body)? @body) @definition.object
; An unnamed companion is called `Companion` in Kotlin.
((companion_object !name (class_body)? @body) @definition.object
  (#set! name.fixed "Companion"))

(function_declaration name: (_) @name (function_body)? @body) @definition.function
; `fun String.shout()`, `fun <T> List<T>?.second()`: an extension, owned by its receiver type.
(function_declaration [(user_type) (nullable_type)] @qualifier . name: (_) @name) @definition.function

((secondary_constructor (block)? @body) @definition.constructor
  (#set! name.fixed "constructor"))
((anonymous_initializer (block) @body) @definition.constructor
  (#set! name.fixed "init"))

; `val handler = fun(x: Int) {...}` / `= { x -> ... }`, and a value a call builds from a trailing
; lambda: ktor's `val HttpTimeout = createClientPlugin("HttpTimeout", ::Config) { ... }`.
(property_declaration (variable_declaration (identifier) @name)
  [(anonymous_function) (lambda_literal) (call_expression (annotated_lambda))]) @definition.function

(call_expression . (_) @callee)
(constructor_invocation (user_type) @callee)

(import (qualified_identifier) @import.module "*"? @import.wildcard (identifier)? @import.alias) @import
