"""The tool catalog: the definitions (names, texts, schemas) of the script tools and
``tool_search`` (``definitions``), the ``[tools.NAME]`` tables (``config``), argument helpers
(``args``) and ``tool_search`` itself."""
