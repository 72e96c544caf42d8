"""prism-code's benchmarks (`prism-code bench ...`), run from a source checkout.

Not installed with the library: prism_code never imports this package, except
`prism-code bench`, which finds it next to prism_code/ and imports it inside the command.
"""
