"""The optional native AST matcher (src/agentgauge/graders/_ast_native.c).

Everything else about the package is in pyproject.toml. The extension is
optional: where no C compiler is found, installing goes on without it and the
pure-Python path runs, with the same results (docs/graders.md, "Speed").
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "agentgauge.graders._ast_native",
            sources=["src/agentgauge/graders/_ast_native.c"],
            optional=True,
            extra_compile_args=[
                "-Werror=implicit-function-declaration",
                "-Werror=int-conversion",
            ],
        )
    ]
)
