# gpu/codec
