//! An event's `args` as Perfetto's typed debug annotations: a serde serializer that
//! writes each field of the args struct as a `DebugAnnotation` (its name interned), and
//! each value as what it is: an integer as `int_value`/`uint_value`, a flag as
//! `bool_value`, text as `string_value`, a list as `array_values`, a struct or map as
//! `dict_entries`. The same serde types that write the JSON's `args` write these, so the
//! two outputs cannot drift apart field by field.

use std::fmt;

use serde::ser::{self, Serialize};

use super::proto::{field, Nested, Proto};

/// Why args could not be written as annotations (a serde type this writer has no form
/// for, such as a map keyed by a struct).
#[derive(Debug)]
pub struct AnnotationError(String);

impl fmt::Display for AnnotationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "args not writable as debug annotations: {}", self.0)
    }
}

impl std::error::Error for AnnotationError {}

impl ser::Error for AnnotationError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        AnnotationError(msg.to_string())
    }
}

/// What annotations need of their sequence: the iids of names and of text values.
pub(crate) trait Interning {
    /// The iid of a debug-annotation name (defined on the sequence when new).
    fn name(&mut self, name: &str) -> u64;
    /// [`Interning::name`] of a name a type names (a struct's field), which may be
    /// found by its address.
    fn static_name(&mut self, name: &'static str) -> u64 {
        self.name(name)
    }
    /// The iid of a text value, or `None` to write the text itself.
    fn string(&mut self, value: &str) -> Option<u64>;
}

/// Writes `args` into `out` (a `TrackEvent` being written) as its debug annotations:
/// one per field of a struct or entry of a map, but those named in `skip`; a value of
/// another shape becomes one annotation named `args`.
pub(crate) fn write_args<A: Serialize + ?Sized>(
    out: &mut Proto,
    interning: &mut dyn Interning,
    skip: &[&str],
    args: &A,
) -> Result<(), AnnotationError> {
    args.serialize(Value {
        out,
        interning,
        top: Some(skip),
    })
}

/// Serializes one value into the annotation being written; `top` (with the fields to
/// leave out) while the args object itself is being written, whose fields become the
/// event's annotations rather than a dictionary.
struct Value<'o, 'n> {
    out: &'o mut Proto,
    interning: &'n mut dyn Interning,
    top: Option<&'n [&'n str]>,
}

/// A struct's, map's or list's members being written.
struct Members<'o, 'n> {
    out: &'o mut Proto,
    interning: &'n mut dyn Interning,
    top: Option<&'n [&'n str]>,
    /// A map's key, waiting for its value.
    key: Option<String>,
}

/// A member's name: one a type names (`&'static str`), or one of a map.
#[derive(Clone, Copy)]
enum Name<'a> {
    Static(&'static str),
    Dynamic(&'a str),
}

impl Name<'_> {
    fn text(&self) -> &str {
        match self {
            Name::Static(s) => s,
            Name::Dynamic(s) => s,
        }
    }
}

impl Members<'_, '_> {
    /// One named member: an annotation of the event (top level) or an entry of the
    /// dictionary; left out when its value wrote nothing (`None`, unit).
    fn member<T: Serialize + ?Sized>(
        &mut self,
        name: Name<'_>,
        v: &T,
    ) -> Result<(), AnnotationError> {
        let before = self.out.bytes.len();
        let nested: Nested = match self.top {
            Some(skip) if skip.contains(&name.text()) => return Ok(()),
            Some(_) => {
                let iid = match name {
                    Name::Static(s) => self.interning.static_name(s),
                    Name::Dynamic(s) => self.interning.name(s),
                };
                let n = self.out.begin(field::DEBUG_ANNOTATIONS);
                self.out.uint(field::ANNOTATION_NAME_IID, iid);
                n
            }
            None => {
                let iid = match name {
                    Name::Static(s) => self.interning.static_name(s),
                    Name::Dynamic(s) => self.interning.name(s),
                };
                let n = self.out.begin(field::DICT_ENTRIES);
                self.out.uint(field::ANNOTATION_NAME_IID, iid);
                n
            }
        };
        let named = self.out.bytes.len();
        v.serialize(Value {
            out: self.out,
            interning: self.interning,
            top: None,
        })?;
        if self.out.bytes.len() == named {
            self.out.bytes.truncate(before);
            return Ok(());
        }
        self.out.end(nested);
        Ok(())
    }

    /// One element of a list.
    fn element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), AnnotationError> {
        let n = self.out.begin(field::ARRAY_VALUES);
        v.serialize(Value {
            out: self.out,
            interning: self.interning,
            top: None,
        })?;
        self.out.end(n);
        Ok(())
    }
}

/// A value that is not a struct, at the top level: one annotation named `args`.
fn top_value<T: Serialize + ?Sized>(v: Value<'_, '_>, value: &T) -> Result<(), AnnotationError> {
    let mut m = Members {
        out: v.out,
        interning: v.interning,
        top: Some(&[]),
        key: None,
    };
    m.member(Name::Static("args"), value)
}

macro_rules! scalar {
    ($name:ident, $t:ty, $self:ident, $v:ident, $body:expr) => {
        fn $name($self, $v: $t) -> Result<(), AnnotationError> {
            if $self.top.is_some() {
                return top_value($self, &$v);
            }
            $body;
            Ok(())
        }
    };
}

impl<'o, 'n> ser::Serializer for Value<'o, 'n> {
    type Ok = ();
    type Error = AnnotationError;
    type SerializeSeq = Members<'o, 'n>;
    type SerializeTuple = Members<'o, 'n>;
    type SerializeTupleStruct = Members<'o, 'n>;
    type SerializeTupleVariant = Members<'o, 'n>;
    type SerializeMap = Members<'o, 'n>;
    type SerializeStruct = Members<'o, 'n>;
    type SerializeStructVariant = Members<'o, 'n>;

    scalar!(
        serialize_bool,
        bool,
        self,
        v,
        self.out.uint(field::BOOL_VALUE, u64::from(v))
    );
    scalar!(
        serialize_i8,
        i8,
        self,
        v,
        self.out.int(field::INT_VALUE, i64::from(v))
    );
    scalar!(
        serialize_i16,
        i16,
        self,
        v,
        self.out.int(field::INT_VALUE, i64::from(v))
    );
    scalar!(
        serialize_i32,
        i32,
        self,
        v,
        self.out.int(field::INT_VALUE, i64::from(v))
    );
    scalar!(
        serialize_i64,
        i64,
        self,
        v,
        self.out.int(field::INT_VALUE, v)
    );
    scalar!(
        serialize_u8,
        u8,
        self,
        v,
        self.out.uint(field::UINT_VALUE, u64::from(v))
    );
    scalar!(
        serialize_u16,
        u16,
        self,
        v,
        self.out.uint(field::UINT_VALUE, u64::from(v))
    );
    scalar!(
        serialize_u32,
        u32,
        self,
        v,
        self.out.uint(field::UINT_VALUE, u64::from(v))
    );
    scalar!(
        serialize_u64,
        u64,
        self,
        v,
        self.out.uint(field::UINT_VALUE, v)
    );
    scalar!(
        serialize_f32,
        f32,
        self,
        v,
        self.out.double(field::DOUBLE_VALUE, f64::from(v))
    );
    scalar!(
        serialize_f64,
        f64,
        self,
        v,
        self.out.double(field::DOUBLE_VALUE, v)
    );
    scalar!(
        serialize_char,
        char,
        self,
        v,
        self.out
            .string(field::STRING_VALUE, v.encode_utf8(&mut [0; 4]))
    );

    fn serialize_str(self, v: &str) -> Result<(), AnnotationError> {
        if self.top.is_some() {
            return top_value(self, v);
        }
        match self.interning.string(v) {
            Some(iid) => self.out.uint(field::STRING_VALUE_IID, iid),
            None => self.out.string(field::STRING_VALUE, v),
        }
        Ok(())
    }

    fn serialize_bytes(self, v: &[u8]) -> Result<(), AnnotationError> {
        let mut s = ser::Serializer::serialize_seq(self, Some(v.len()))?;
        for b in v {
            ser::SerializeSeq::serialize_element(&mut s, b)?;
        }
        ser::SerializeSeq::end(s)
    }

    fn serialize_none(self) -> Result<(), AnnotationError> {
        Ok(())
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), AnnotationError> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<(), AnnotationError> {
        Ok(())
    }

    fn serialize_unit_struct(self, _: &'static str) -> Result<(), AnnotationError> {
        Ok(())
    }

    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<(), AnnotationError> {
        self.serialize_str(variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), AnnotationError> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), AnnotationError> {
        let mut m = Members {
            out: self.out,
            interning: self.interning,
            top: self.top,
            key: None,
        };
        m.member(Name::Static(variant), value)
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Members<'o, 'n>, AnnotationError> {
        if self.top.is_some() {
            return Err(ser::Error::custom("a list at the top level"));
        }
        Ok(Members {
            out: self.out,
            interning: self.interning,
            top: None,
            key: None,
        })
    }

    fn serialize_tuple(self, len: usize) -> Result<Members<'o, 'n>, AnnotationError> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_struct(
        self,
        _: &'static str,
        len: usize,
    ) -> Result<Members<'o, 'n>, AnnotationError> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        len: usize,
    ) -> Result<Members<'o, 'n>, AnnotationError> {
        self.serialize_seq(Some(len))
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Members<'o, 'n>, AnnotationError> {
        Ok(Members {
            out: self.out,
            interning: self.interning,
            top: self.top,
            key: None,
        })
    }

    fn serialize_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Members<'o, 'n>, AnnotationError> {
        self.serialize_map(None)
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Members<'o, 'n>, AnnotationError> {
        self.serialize_map(None)
    }
}

impl ser::SerializeSeq for Members<'_, '_> {
    type Ok = ();
    type Error = AnnotationError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), AnnotationError> {
        self.element(v)
    }
    fn end(self) -> Result<(), AnnotationError> {
        Ok(())
    }
}

impl ser::SerializeTuple for Members<'_, '_> {
    type Ok = ();
    type Error = AnnotationError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), AnnotationError> {
        self.element(v)
    }
    fn end(self) -> Result<(), AnnotationError> {
        Ok(())
    }
}

impl ser::SerializeTupleStruct for Members<'_, '_> {
    type Ok = ();
    type Error = AnnotationError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), AnnotationError> {
        self.element(v)
    }
    fn end(self) -> Result<(), AnnotationError> {
        Ok(())
    }
}

impl ser::SerializeTupleVariant for Members<'_, '_> {
    type Ok = ();
    type Error = AnnotationError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), AnnotationError> {
        self.element(v)
    }
    fn end(self) -> Result<(), AnnotationError> {
        Ok(())
    }
}

impl ser::SerializeMap for Members<'_, '_> {
    type Ok = ();
    type Error = AnnotationError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), AnnotationError> {
        // Keys are text in the JSON too (serde_json writes integer keys as strings).
        let text = serde_json::to_value(key).map_err(ser::Error::custom)?;
        self.key = Some(match text {
            serde_json::Value::String(s) => s,
            other => other.to_string(),
        });
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), AnnotationError> {
        let key = self.key.take().unwrap_or_default();
        self.member(Name::Dynamic(&key), v)
    }
    fn end(self) -> Result<(), AnnotationError> {
        Ok(())
    }
}

impl ser::SerializeStruct for Members<'_, '_> {
    type Ok = ();
    type Error = AnnotationError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        v: &T,
    ) -> Result<(), AnnotationError> {
        self.member(Name::Static(key), v)
    }
    fn end(self) -> Result<(), AnnotationError> {
        Ok(())
    }
}

impl ser::SerializeStructVariant for Members<'_, '_> {
    type Ok = ();
    type Error = AnnotationError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        v: &T,
    ) -> Result<(), AnnotationError> {
        self.member(Name::Static(key), v)
    }
    fn end(self) -> Result<(), AnnotationError> {
        Ok(())
    }
}
