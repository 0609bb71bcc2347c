# gpu/train
