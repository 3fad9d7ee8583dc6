def train(:
    pass
