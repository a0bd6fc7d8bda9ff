HEURISTICS: dict = {}
