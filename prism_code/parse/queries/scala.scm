; Scala 2 and 3: definitions, calls and imports (read by prism_code/parse/tagged.py).

(class_definition name: (_) @name body: (_)? @body) @definition.class
(object_definition name: (_) @name body: (_)? @body) @definition.object
(trait_definition name: (_) @name body: (_)? @body) @definition.trait
(enum_definition name: (_) @name body: (_)? @body) @definition.enum
(given_definition name: (_) @name body: (_)? @body) @definition.object

(function_definition name: (_) @name body: (_)? @body) @definition.function
(function_declaration name: (_) @name) @definition.function
; `extension (c: Cart) def shout` / `extension (c: Cart) { def a; def b }`: owned by Cart.
(extension_definition
  parameters: (parameters . (parameter type: (_) @qualifier))
  body: (function_definition name: (_) @name body: (_)? @body) @definition.function)
(extension_definition
  parameters: (parameters . (parameter type: (_) @qualifier))
  body: (_ (function_definition name: (_) @name body: (_)? @body) @definition.function))

; `val handler = (x: Int) => x + 1`
(val_definition pattern: (identifier) @name value: (lambda_expression)) @definition.function

(call_expression function: (_) @callee)
(instance_expression . [(type_identifier) (generic_type) (stable_type_identifier)] @callee)

((import_declaration) @import (#set! import.read "scala_import"))
