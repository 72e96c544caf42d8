; Haskell: definitions, calls and imports (read by prism_code/parse/tagged.py).
; A function is its signature and all its equations: consecutive ones merge (clauses.py).

(declarations (signature name: (_) @name) @definition.function)
(declarations (function name: (_) @name match: (_)? @body) @definition.function)
(declarations (bind name: (_) @name match: (_)? @body) @definition.function)
(class_declarations (signature name: (_) @name) @definition.function)
(class_declarations (function name: (_) @name match: (_)? @body) @definition.function)
(class_declarations (bind name: (_) @name match: (_)? @body) @definition.function)
(instance_declarations (signature name: (_) @name) @definition.function)
(instance_declarations (function name: (_) @name match: (_)? @body) @definition.function)
(instance_declarations (bind name: (_) @name match: (_)? @body) @definition.function)

(class name: (_) @name declarations: (_)? @body) @definition.class
; `instance Show a => Pretty [a]`: named by class and type, "Pretty [a]".
(instance name: (_) @name patterns: (_)? @name declarations: (_)? @body) @definition.instance
(data_type name: (_) @name) @definition.type
(newtype name: (_) @name) @definition.type
(type_synonym name: (_) @name) @definition.type
(type_family name: (_) @name) @definition.type
(data_family name: (_) @name) @definition.type
(pattern_synonym (signature synonym: (_) @name)) @definition.function

(apply function: [(variable) (qualified) (constructor)] @callee)
; `f $ x`, `x & f`, `g . f`: the named function operands of an operator application.
(infix left_operand: [(variable) (qualified)] @callee operator: (operator) @_op (#any-of? @_op "$" "<$>" "." "=<<"))
(infix operator: (operator) @_op right_operand: [(variable) (qualified)] @callee (#any-of? @_op "&" "<&>" "." ">>="))

(import module: (module) @import.module alias: (module)? @import.alias
  names: (import_list (import_name)* @import.name)?) @import
