use chord::Tracked;

#[derive(Tracked)]
union Bits {
    int: u32,
    float: f32,
}

fn main() {}
