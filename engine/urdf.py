def load_urdf(path):
    raise NotImplementedError("being written")
