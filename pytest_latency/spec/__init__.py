"""The spec layer: what to offer and what to decide, validated, from Python or YAML.

``model`` holds the workload, phase, objective and server specs; ``units`` and
``checks`` their validation; ``slo_yaml`` reads ``*.slo.yaml`` files with their line map
(``yaml_lines``, ``yaml_context``), helped by ``gates_yaml``, ``sources_yaml`` and
``limits_yaml``; ``gates``, ``capacity``, ``trace``, ``prompts`` and ``sessions`` are the
later kinds of objective and phase. Nothing here imports another layer of the package.
"""
