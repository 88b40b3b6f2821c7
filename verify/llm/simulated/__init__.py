"""An offline, deterministic simulated provider (it says "simulated" in its model names).

``brain.reply`` turns a request (messages plus the wanted JSON schema) into reply text; the
in-process model (``model.SimulatedModel``) and the OpenAI-compatible HTTP server
(``server``, ``python -m verify.llm.simulated serve --port N``) both use it.
"""
