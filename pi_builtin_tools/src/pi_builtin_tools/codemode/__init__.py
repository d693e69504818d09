"""The script tools: ``codemode`` (JavaScript, ``javascript``, run by the ``_worker.py`` process
on Pi's ``prelude.js``) and ``codemode_python`` (Monty, ``python``), their common part
(``common``), the ``tools`` declarations shown to the model (``declarations``) and the source
format (``source``)."""
