//! Implementations that exist only to turn two common mistakes with field proxies into
//! errors that say what to write instead: assigning a proxy with `=` (`state.status =
//! "done".into()`) and computing with a proxy as if it were its value (`state.run_id * 1000`).
//!
//! Each implementation is bounded by a trait that no type implements, so none of them can
//! ever be selected by code that compiles; the trait's `on_unimplemented` message is what the
//! compiler shows instead of "`From<&str>` is not implemented for `TextProxy`" or "cannot
//! multiply `LeafProxy<'_, u64>` by `{integer}`".

use std::convert::Infallible;

use super::{DequeProxy, LeafProxy, MapProxy, OptionProxy, TextProxy, ValueProxy, VecProxy};

/// Implemented by no type: the bound of `From<V>` for the proxies, reached by
/// `state.field = value.into()`. (Its `Self` is the proxy, not `V`, so that the compiler
/// reports this bound, and not `V: Into<Proxy>`.)
#[diagnostic::on_unimplemented(
    message = "a field proxy cannot be assigned with `=`: `{Self}` is a handle to the field, not its value",
    label = "this would replace the handle, not the field's value",
    note = "write through the proxy instead: `*state.field = value` (or `state.field.set(value)`)"
)]
pub trait AssignThroughTheProxy<V> {
    /// Never called: no type implements the trait.
    fn never(value: V) -> Infallible;
}

macro_rules! refuse_from {
    ($(impl<$($g:tt),*> for $proxy:ty;)*) => {$(
        #[doc(hidden)] // (a diagnostic, not an API)
        impl<$($g,)* __V> From<__V> for $proxy
        where
            $proxy: AssignThroughTheProxy<__V>,
        {
            #[allow(unreachable_code)] // (the `match` on a value no type can hold)
            fn from(v: __V) -> Self {
                match <$proxy as AssignThroughTheProxy<__V>>::never(v) {}
            }
        }
    )*};
}

refuse_from! {
    impl<'a, T> for LeafProxy<'a, T>;
    impl<'a> for TextProxy<'a>;
    impl<'a, T> for VecProxy<'a, T>;
    impl<'a, T> for DequeProxy<'a, T>;
    impl<'a, M> for MapProxy<'a, M>;
    impl<'a, T> for OptionProxy<'a, T>;
    impl<'a> for ValueProxy<'a>;
}

/// The bound of the arithmetic operators on the proxies, reached by `state.field * 1000`
/// (the compound assignments, `state.field += 1`, are implemented). Implemented only for the
/// two right-hand sides below, which no value has: two, so that the right-hand side's type
/// stays open until the operand decides it, and the compiler then reports this bound (and
/// its message) rather than "cannot multiply".
#[diagnostic::on_unimplemented(
    message = "`{Self}` is a handle to a field, not its value",
    label = "read the value with `*` first",
    note = "a field proxy derefs to its value: read it with `*` (`*state.field * 1000`); `state.field += 1` and the other compound assignments work on the proxy itself"
)]
pub trait WriteStarToReadTheValue<R> {
    /// Never called: no value of either right-hand side exists.
    fn never(&self, rhs: R) -> Infallible;
}

/// A right-hand side no value has (see [`WriteStarToReadTheValue`]).
pub enum NoRhs {}

/// The other right-hand side no value has (see [`WriteStarToReadTheValue`]).
pub enum NoOtherRhs {}

/// [`WriteStarToReadTheValue`] for a text proxy: `state.text + "!"`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is a handle to a field, not its text",
    label = "this would consume the handle",
    note = "to append to the field, write `state.field += ..`; for a new string, `format!(\"{{}}!\", *state.field)` or `state.field.to_string() + ..`"
)]
pub trait AppendOrCopyTheText<R> {
    /// Never called: no value of either right-hand side exists.
    fn never(&self, rhs: R) -> Infallible;
}

macro_rules! no_rhs {
    ($($rhs:ident),*) => {$(
        #[diagnostic::do_not_recommend]
        impl<T> WriteStarToReadTheValue<$rhs> for LeafProxy<'_, T> {
            fn never(&self, rhs: $rhs) -> Infallible {
                match rhs {}
            }
        }

        #[diagnostic::do_not_recommend]
        impl AppendOrCopyTheText<$rhs> for TextProxy<'_> {
            fn never(&self, rhs: $rhs) -> Infallible {
                match rhs {}
            }
        }
    )*};
}

no_rhs!(NoRhs, NoOtherRhs);

macro_rules! refuse_binary {
    ($($trait:ident $method:ident),*) => {$(
        #[doc(hidden)] // (a diagnostic, not an API)
        impl<T: std::ops::$trait<R>, R> std::ops::$trait<R> for LeafProxy<'_, T>
        where
            Self: WriteStarToReadTheValue<R>,
        {
            type Output = T::Output;
            #[allow(unreachable_code)] // (the `match` on a value no type can hold)
            fn $method(self, rhs: R) -> T::Output {
                match self.never(rhs) {}
            }
        }
    )*};
}

refuse_binary!(Add add, Sub sub, Mul mul, Div div, Rem rem, BitAnd bitand, BitOr bitor,
    BitXor bitxor, Shl shl, Shr shr);

#[doc(hidden)] // (a diagnostic, not an API)
impl<R> std::ops::Add<R> for TextProxy<'_>
where
    String: std::ops::Add<R>,
    Self: AppendOrCopyTheText<R>,
{
    type Output = <String as std::ops::Add<R>>::Output;
    #[allow(unreachable_code)] // (the `match` on a value no type can hold)
    fn add(self, rhs: R) -> Self::Output {
        match self.never(rhs) {}
    }
}

/// The bound of the unary operators on the proxies (`-state.field`, `!state.flag`):
/// implemented by no type.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is a handle to a field, not its value",
    label = "read the value with `*` first",
    note = "a field proxy derefs to its value: write `-*state.field` or `!*state.flag`"
)]
pub trait WriteStarToReadTheOperand {
    /// Never called: no type implements the trait.
    fn never(&self) -> Infallible;
}

macro_rules! refuse_unary {
    ($($trait:ident $method:ident),*) => {$(
        #[doc(hidden)] // (a diagnostic, not an API)
        impl<T: std::ops::$trait> std::ops::$trait for LeafProxy<'_, T>
        where
            Self: WriteStarToReadTheOperand,
        {
            type Output = T::Output;
            #[allow(unreachable_code)] // (the `match` on a value no type can hold)
            fn $method(self) -> T::Output {
                match WriteStarToReadTheOperand::never(&self) {}
            }
        }
    )*};
}

refuse_unary!(Neg neg, Not not);
