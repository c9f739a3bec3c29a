class Classifier:
    def __init__(self, log=print):
        pass

    def classify(self, f):
        return "unexplained"
